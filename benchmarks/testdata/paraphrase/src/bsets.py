# BFCL helpers: F(base) = the tool `base` and all its same-name variants `base__vN` in the catalog
# (only used where every variant does the same thing; exceptions are passed in `exclude`).
import json, re
import os
# ../shared beside the repository (or $TOOLSIFT_SHARED).
SHARED = os.environ.get("TOOLSIFT_SHARED", os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../../../shared"))

_NAMES = [json.loads(l)["name"] for l in open(os.path.join(SHARED, "datasets/bfcl/tools.jsonl"))]
def _key(n):
    m = re.match(r"^(.*)__v(\d+)$", n)
    return (m.group(1), int(m.group(2))) if m else (n, 1)
def F(base, exclude=()):
    out = [n for n in _NAMES if _key(n)[0] == base and n not in exclude]
    assert out, base
    return sorted(out, key=lambda n: _key(n)[1])

# current weather for a named place
B_WEATHER_NOW = F("get_current_weather") + ["current_weather_condition", "weather.get", "weather.get__v2", "weather.get__v3",
    "weather.get_weather", "weather.get_weather_data", "api.weather", "OpenWeatherMap.get_current_weather",
    "get_weather", "Weather_1_GetWeather__v2", "uber.ride2"]
# add two numbers
B_ADD = F("add") + F("sum") + F("calculate_sum") + ["math.sum", "sum_numbers"] + F("sum_elements")
# body mass index
B_BMI = F("calculate_bmi") + ["calculate_BMI"] + F("determine_body_mass_index")
# convert an amount between currencies
B_FX = F("currency_conversion") + F("currency_conversion.convert") + F("currency_exchange.convert") + F("currency_converter") \
    + F("convert_currency") + ["currency_exchange.calculate"]
# Adriel's education (dedicated tools, combined experience+education lists, and detail tools that take a type)
B_ADRIEL_EDU = F("get_adriel_education") + F("get_adriel_experiences_and_education") + ["adriel_experiences_and_education",
    "experiences_and_education", "get_adriel_detail_experience_and_education__v5", "adriel_detail_experience_and_education",
    "detail_experience_and_education", "get_adriel_detail_experience_and_education__v4"] + F("get_adriel_experiences")
# Adriel's work history (experience lists, combined lists, detail tools that take a type)
B_ADRIEL_JOBS = F("get_adriel_experiences") + F("get_adriel_experiences_and_education") + ["adriel_experiences_and_education",
    "experiences_and_education", "get_adriel_detail_experience_and_education__v5", "get_adriel_detail_experience_and_education__v4",
    "adriel_detail_experience_and_education", "detail_experience_and_education"]
# Dependency-Track project update / lookup by name+version
B_PROJ_UPDATE = F("project_api.ProjectApi.update_project") + F("project_api.update_project") + ["ProjectApi.update_project"]
B_PROJ_BY_NV = F("project_api.ProjectApi.get_project_by_name_and_version")
# translate a text between two languages
B_TRANSLATE = ["translate", "translate_text", "translate_text__v2", "language_translator.translate", "finish",
               "get_translation_nllb", "get_translation_baidu"]
# find restaurants by cuisine and place
B_REST_FIND = ["restaurant_info", "restaurant.find_nearby__v2", "restaurant_finder", "restaurant_finder__v2", "restaurant_finder__v3",
               "restaurant.search", "find_restaurants"] + F("Restaurants_2_FindRestaurants")
# generic HTTP GET with query parameters
B_HTTP_GET = ["requests.get__v6", "requests.get__v10", "requests.get__v11", "requests.get__v13", "requests.get__v14",
              "requests.get__v16", "requests.get__v21", "requests.get__v23", "requests.get__v24", "requests.get__v25"]
# area of a circle from its radius
B_CIRCLE_AREA = ["geometry.area_circle", "geometry.calculate_area_circle", "calculate_circle_dimensions", "circle_properties.get",
                 "math.circle_area", "circle.area", "geometry_circle.calculate", "area_circle.calculate", "circle.calculate_area"]
# book a hotel room by place and dates (no particular hotel named)
B_HOTEL_BOOK_ANY = ["book_hotel__v3", "hotel_bookings.book_room", "hotel_booking.book", "hotel_booking", "hotel.book", "hotel_book"]
# add an item to a to-do list
B_TODO_ADD = ["todo.add"] + F("todo_add") + F("todo") + ["todo_manager.handle_action", "todo.list_action"]
# weather forecast for a given city and (future) date
B_FORECAST_DATE = [n for n in F("Weather_1_GetWeather") if n not in ("Weather_1_GetWeather__v2", "Weather_1_GetWeather__v6", "Weather_1_GetWeather__v8")] \
    + ["api_name.get_weather_forecast"] + F("weather_forecast.get") + F("weather.forecast") + F("get_weather_forecast") \
    + F("weather_forecast.get_prediction")
# area of a triangle from base and height
B_TRIANGLE = F("calculate_triangle_area") + ["calculate_area", "calc_area_triangle", "geometry.area_triangle",
              "math.triangle_area_base_height", "triangle.area"]
# definite integral of a function
B_INTEGRAL = ["calculate_integral", "integral", "integrate", "math.definite_integral", "calculus.compute_definite_integral",
              "math.gaussian_integral", "mathematics.calculate_area_under_curve"]
# sum of a list of numbers
B_LIST_SUM = ["sum_numbers", "math.sum"] + F("sum_elements")
